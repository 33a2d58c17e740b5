{% test ppdp_risk_below(model, quasi_identifiers, threshold) %}
  {{ return(adapter.dispatch('test_ppdp_risk_below', 'dbt_ppdp')(model, quasi_identifiers, threshold)) }}
{% endtest %}

{# Average prosecutor risk: the mean over records of 1 / (size of the record's class), which is
   the number of classes divided by the number of records (ARX's prosecutor model). #}
{% macro default__test_ppdp_risk_below(model, quasi_identifiers, threshold) %}
{% set qids = dbt_ppdp.ppdp_column_list(quasi_identifiers) %}
with classes as (
  select count(*) as class_size from {{ model }} group by {{ qids }}
), risk as (
  select sum(class_size) as records, count(*) as classes,
         count(*) * 1.0 / nullif(sum(class_size), 0) as average_risk,
         1.0 / nullif(min(class_size), 0) as highest_risk
  from classes
)
select * from risk where average_risk > {{ dbt_ppdp.ppdp_number(threshold, 'threshold') }}
{% endmacro %}
