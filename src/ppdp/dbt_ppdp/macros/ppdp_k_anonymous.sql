{% test ppdp_k_anonymous(model, quasi_identifiers, k) %}
  {{ return(adapter.dispatch('test_ppdp_k_anonymous', 'dbt_ppdp')(model, quasi_identifiers, k)) }}
{% endtest %}

{# Every class (records equal on the QIDs) has at least k records (Samarati and Sweeney). #}
{% macro default__test_ppdp_k_anonymous(model, quasi_identifiers, k) %}
select {{ dbt_ppdp.ppdp_column_list(quasi_identifiers) }}, count(*) as class_size
from {{ model }}
group by {{ dbt_ppdp.ppdp_column_list(quasi_identifiers) }}
having count(*) < {{ dbt_ppdp.ppdp_number(k, 'k') }}
{% endmacro %}
