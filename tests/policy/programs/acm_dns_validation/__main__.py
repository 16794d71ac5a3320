"""An ACM certificate validated through Route 53: the validation record comes from the
certificate's computed `domain_validation_options` (a list of objects)."""

import pulumi
import pulumi_aws as aws

zone = aws.route53.get_zone(name="example.com", private_zone=False)
cert = aws.acm.Certificate("api", domain_name="api.example.com", validation_method="DNS")
option = cert.domain_validation_options[0]
record = aws.route53.Record(
    "api-validation",
    zone_id=zone.zone_id,
    name=option.resource_record_name,
    type=option.resource_record_type,
    records=[option.resource_record_value],
    ttl=60,
    allow_overwrite=True,
)
validation = aws.acm.CertificateValidation(
    "api", certificate_arn=cert.arn, validation_record_fqdns=[record.fqdn]
)
pulumi.export("certificate", validation.certificate_arn)
