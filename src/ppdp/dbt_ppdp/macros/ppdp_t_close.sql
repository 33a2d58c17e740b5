{% test ppdp_t_close(model, quasi_identifiers, sensitive, t, distance='euclidean', reference=none) %}
  {{ return(adapter.dispatch('test_ppdp_t_close', 'dbt_ppdp')(model, quasi_identifiers, sensitive, t, distance, reference)) }}
{% endtest %}

{# t-closeness: each class's sensitive distribution P is within t of Q, the distribution over
   `reference` (ppdp: the source table, docs/design/paper_notes.md §2). euclidean = ||P - Q||_2 (HAEF eq. 2-4,
   ppdp's default); equal = Earth Mover's Distance with equal ground distance, which is half the
   L1 distance (Li et al. 2007, sec. 4.1). Values of P absent from Q count in full. #}
{% macro default__test_ppdp_t_close(model, quasi_identifiers, sensitive, t, distance, reference) %}
{% if distance not in ['euclidean', 'equal'] %}
  {{ exceptions.raise_compiler_error("dbt_ppdp: distance must be 'euclidean' or 'equal', got " ~ distance) }}
{% endif %}
{% set qids = dbt_ppdp.ppdp_column_list(quasi_identifiers) %}
{% set s = dbt_ppdp.ppdp_quote(sensitive) %}
with q as (
  select {{ s }} as sensitive_value, count(*) * 1.0 / sum(count(*)) over () as q
  from {{ reference if reference is not none else model }}
  group by {{ s }}
), cells as (
  select {{ qids }}, {{ s }} as sensitive_value, count(*) * 1.0 as n
  from {{ model }}
  group by {{ qids }}, {{ s }}
), sized as (
  select cells.*, sum(n) over (partition by {{ qids }}) as class_size from cells
), classes as (
  select distinct {{ qids }}, class_size from sized
), grid as (
  -- every class against every value of Q or of the class
  select {% for c in quasi_identifiers %}classes.{{ dbt_ppdp.ppdp_quote(c) }}, {% endfor %}classes.class_size, q.sensitive_value
  from classes cross join q
  union
  select {{ qids }}, class_size, sensitive_value from sized
), gaps as (
  select {% for c in quasi_identifiers %}grid.{{ dbt_ppdp.ppdp_quote(c) }}, {% endfor %}grid.class_size,
         abs(coalesce(sized.n, 0) / grid.class_size - coalesce(q.q, 0)) as gap
  from grid
  left join sized on {% for c in quasi_identifiers %}grid.{{ dbt_ppdp.ppdp_quote(c) }} is not distinct from sized.{{ dbt_ppdp.ppdp_quote(c) }} and {% endfor %}grid.sensitive_value is not distinct from sized.sensitive_value
  left join q on grid.sensitive_value is not distinct from q.sensitive_value
), distances as (
  select {{ qids }}, max(class_size) as class_size,
         {% if distance == 'equal' %}0.5 * sum(gap){% else %}sqrt(sum(gap * gap)){% endif %} as distance
  from gaps
  group by {{ qids }}
)
select * from distances where distance > {{ dbt_ppdp.ppdp_number(t, 't') }} + 1e-12
{% endmacro %}
