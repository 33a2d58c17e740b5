{% test ppdp_release_verified(model, release, release_schema, ppdp_schema='_ppdp') %}
  {{ return(adapter.dispatch('test_ppdp_release_verified', 'dbt_ppdp')(model, release, release_schema, ppdp_schema)) }}
{% endtest %}

{# The release's current version passed ppdp's own SQL verification (the checks ppdp ran on
   `__vN` before it switched the view, recorded in _ppdp.runs), and the relation tested still has
   the rows that were verified. Re-checking the privacy model itself is the other tests' job. #}
{% macro default__test_ppdp_release_verified(model, release, release_schema, ppdp_schema) %}
with current_version as (
  select runs.version, cast(runs.verification as json) ->> 'passed' as passed,
         cast(cast(runs.verification as json) ->> 'rows' as bigint) as verified_rows
  from {{ dbt_ppdp.ppdp_quote(ppdp_schema) }}.{{ dbt_ppdp.ppdp_quote('runs') }} as runs
  join {{ dbt_ppdp.ppdp_quote(ppdp_schema) }}.{{ dbt_ppdp.ppdp_quote('releases') }} as releases
    on runs.release = releases.release
  where releases.output_schema = {{ dbt_ppdp.ppdp_literal(release_schema) }}
    and releases.output_name = {{ dbt_ppdp.ppdp_literal(release) }}
    and runs.status = 'succeeded'
  order by runs.version desc
  limit 1
), tested as (
  select count(*) as current_rows from {{ model }}
)
select 'no published version' as problem, cast(null as integer) as version,
       cast(null as bigint) as verified_rows, tested.current_rows
from tested where not exists (select 1 from current_version)
union all
select 'verification did not pass', current_version.version, current_version.verified_rows, tested.current_rows
from current_version cross join tested where coalesce(current_version.passed, 'false') <> 'true'
union all
select 'rows differ from the verified version', current_version.version, current_version.verified_rows, tested.current_rows
from current_version cross join tested where current_version.verified_rows is distinct from tested.current_rows
{% endmacro %}
