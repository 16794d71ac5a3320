"""A hosted zone with an alias record to a load balancer and a weighted CNAME; the zone's
computed name servers exported."""

import pulumi
import pulumi_aws as aws

zone = aws.route53.Zone("shop", name="shop.example.org")
subnets = aws.ec2.get_subnets(filters=[{"name": "default-for-az", "values": ["true"]}])
lb = aws.lb.LoadBalancer("shop", load_balancer_type="network", subnets=subnets.ids)
aws.route53.Record(
    "apex",
    zone_id=zone.zone_id,
    name="shop.example.org",
    type="A",
    aliases=[{"name": lb.dns_name, "zone_id": lb.zone_id, "evaluate_target_health": True}],
)
for weight, target in ((90, "blue"), (10, "green")):
    aws.route53.Record(
        f"www-{target}",
        zone_id=zone.zone_id,
        name="www.shop.example.org",
        type="CNAME",
        ttl=60,
        records=[f"{target}.shop.example.org"],
        set_identifier=target,
        weighted_routing_policies=[{"weight": weight}],
    )
pulumi.export("name_servers", zone.name_servers.apply(lambda ns: ", ".join(ns)))
