"""Monthly invoicing: a MonthlyFanout over the team's own customer table, its own charge handler.

The fan-out itself is stage config (Pulumi.<stack>.yaml, ``billing:fanouts.invoicing``); this
program adds what config cannot hold: the billing source, a table of the team's own that the
CRM sync writes, passed to the fan-out as Outputs through ``deploy_stage(defaults=...)``.
"""

import pulumi
import pulumi_aws as aws

from idempotent_messaging.stage import FANOUTS_KEY, deploy_stage

# The billing source: one item per (tenant, subscriber), in the dispatcher's DynamoDB source
# schema (tenant_id S + employee_id S; amount N in minor units, currency S, active BOOL).
customers = aws.dynamodb.Table(
    "customers",
    name=f"billing-{pulumi.get_stack()}-customers",
    billing_mode="PAY_PER_REQUEST",
    hash_key="tenant_id",
    range_key="employee_id",
    attributes=[
        aws.dynamodb.TableAttributeArgs(name="tenant_id", type="S"),
        aws.dynamodb.TableAttributeArgs(name="employee_id", type="S"),
    ],
    point_in_time_recovery=aws.dynamodb.TablePointInTimeRecoveryArgs(enabled=True),
    server_side_encryption=aws.dynamodb.TableServerSideEncryptionArgs(enabled=True),
    deletion_protection_enabled=True,
    # The subscribers are the business's own records: no replacement or destroy deletes them.
    opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
)

deploy_stage(
    defaults={
        FANOUTS_KEY: {
            "invoicing": {
                "existing_billing_accounts_table_name": customers.name,
                "existing_billing_accounts_table_arn": customers.arn,
            }
        }
    }
)

pulumi.export("customers_table_name", customers.name)
