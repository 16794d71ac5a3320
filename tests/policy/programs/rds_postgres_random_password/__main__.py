"""RDS PostgreSQL with a generated master password kept in Secrets Manager.

Exercises: a random-provider secret (unknown in preview) flowing into a resource and into a
JSON connection document built with the instance's computed `address` and `port`."""

import pulumi
import pulumi_aws as aws
import pulumi_random as random

password = random.RandomPassword("db-master", length=24, special=True, override_special="_%")
subnet_ids = aws.ec2.get_subnets(filters=[{"name": "default-for-az", "values": ["true"]}]).ids
group = aws.rds.SubnetGroup("db", subnet_ids=subnet_ids)
db = aws.rds.Instance(
    "orders-db",
    engine="postgres",
    engine_version="16.3",
    instance_class="db.t4g.micro",
    allocated_storage=20,
    db_subnet_group_name=group.name,
    username="orders",
    password=password.result,
    storage_encrypted=True,
    skip_final_snapshot=True,
)
secret = aws.secretsmanager.Secret("orders-db")
aws.secretsmanager.SecretVersion(
    "orders-db",
    secret_id=secret.id,
    secret_string=pulumi.Output.json_dumps(
        {
            "username": "orders",
            "password": password.result,
            "host": db.address,
            "port": db.port,
        }
    ),
)
pulumi.export(
    "dsn",
    pulumi.Output.format(
        "postgresql://orders:{0}@{1}:{2}/postgres", password.result, db.address, db.port
    ),
)
