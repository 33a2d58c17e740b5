{% test ppdp_l_diverse(model, quasi_identifiers, sensitive, l, kind='distinct') %}
  {{ return(adapter.dispatch('test_ppdp_l_diverse', 'dbt_ppdp')(model, quasi_identifiers, sensitive, l, kind)) }}
{% endtest %}

{# Distinct l-diversity: at least l sensitive values per class; entropy l-diversity: the class's
   sensitive entropy is at least log(l) (Machanavajjhala et al. 2007). #}
{% macro default__test_ppdp_l_diverse(model, quasi_identifiers, sensitive, l, kind) %}
{% if kind not in ['distinct', 'entropy'] %}
  {{ exceptions.raise_compiler_error("dbt_ppdp: kind must be 'distinct' or 'entropy', got " ~ kind) }}
{% endif %}
{% set qids = dbt_ppdp.ppdp_column_list(quasi_identifiers) %}
with cells as (
  select {{ qids }}, {{ dbt_ppdp.ppdp_quote(sensitive) }} as sensitive_value, count(*) as n
  from {{ model }}
  group by {{ qids }}, {{ dbt_ppdp.ppdp_quote(sensitive) }}
), sized as (
  select cells.*, sum(n) over (partition by {{ qids }}) as class_size from cells
), classes as (
  select {{ qids }}, max(class_size) as class_size, count(*) as distinct_values,
         -sum((n * 1.0 / class_size) * ln(n * 1.0 / class_size)) as entropy
  from sized
  group by {{ qids }}
)
select * from classes
{% if kind == 'distinct' %}
where distinct_values < {{ dbt_ppdp.ppdp_number(l, 'l') }}
{% else %}
where entropy < ln({{ dbt_ppdp.ppdp_number(l, 'l') }}) - 1e-12
{% endif %}
{% endmacro %}
