"""Aurora PostgreSQL Serverless v2 cluster whose password comes from stack config as a
secret; the writer and reader endpoints exported."""

import pulumi
import pulumi_aws as aws

cfg = pulumi.Config()
cluster = aws.rds.Cluster(
    "ledger",
    engine="aurora-postgresql",
    engine_mode="provisioned",
    engine_version="15.4",
    database_name="ledger",
    master_username="ledger",
    master_password=cfg.require_secret("dbPassword"),
    storage_encrypted=True,
    skip_final_snapshot=True,
    serverlessv2_scaling_configuration={"min_capacity": 0.5, "max_capacity": 4},
)
for i in range(2):
    aws.rds.ClusterInstance(
        f"ledger-{i}",
        cluster_identifier=cluster.id,
        instance_class="db.serverless",
        engine=cluster.engine,
        engine_version=cluster.engine_version,
    )
pulumi.export("writer", cluster.endpoint)
pulumi.export("reader", cluster.reader_endpoint.apply(lambda e: e.lower()))
