"""The published release: ppdp anonymizes stg_adult on dbt's connection and returns the view."""

import ppdp.dbt


def model(dbt, session):
    dbt.config(materialized="table")
    return ppdp.dbt.release(dbt, session, spec="ppdp/adult_release.toml", source=dbt.ref("stg_adult"))
