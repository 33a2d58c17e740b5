{% test ppdp_t_close(model, quasi_identifiers, sensitive, t, distance='euclidean', reference=none, release=none,
                     release_schema='published', ppdp_schema='_ppdp') %}
  {{ return(adapter.dispatch('test_ppdp_t_close', 'dbt_ppdp')(model, quasi_identifiers, sensitive, t, distance, reference,
                                                               release, release_schema, ppdp_schema)) }}
{% endtest %}

{# t-closeness: each class's sensitive distribution P is within t of Q, the distribution over
   `reference` (ppdp: the source table, docs/design/paper_notes.md §2). euclidean = ||P - Q||_2 (HAEF eq. 2-4,
   ppdp's default); equal = Earth Mover's Distance with equal ground distance, which is half the
   L1 distance (Li et al. 2007, sec. 4.1). Values of P absent from Q count in full.
   With `release` (ppdp's output name, in `release_schema`), Q is the distribution ppdp stored with
   that release's current version (`_ppdp.distributions`): the one its SQL verification used,
   which a later version keeps from the version before while the models are unchanged; the
   current source's would fail a correct later version once the source drifts. Values are then
   matched by ppdp's key of a sensitive value (md5 of its escaped text, as sql/history.py's sa_key). #}
{% macro default__test_ppdp_t_close(model, quasi_identifiers, sensitive, t, distance, reference,
                                    release=none, release_schema='published', ppdp_schema='_ppdp') %}
{% if distance not in ['euclidean', 'equal'] %}
  {{ exceptions.raise_compiler_error("dbt_ppdp: distance must be 'euclidean' or 'equal', got " ~ distance) }}
{% endif %}
{% set qids = dbt_ppdp.ppdp_column_list(quasi_identifiers) %}
{% if release is not none and reference is not none %}
  {{ exceptions.raise_compiler_error("dbt_ppdp: ppdp_t_close takes release (Q stored by ppdp) or reference (Q of a relation), not both") }}
{% endif %}
{% if release is not none %}
{% set s = "md5(coalesce(replace(replace(replace(cast(" ~ dbt_ppdp.ppdp_quote(sensitive) ~ " as varchar), '~', '~0'), '|', '~1'), chr(92), '~2'), chr(92) || 'N'))" %}
{% set p = dbt_ppdp.ppdp_quote(ppdp_schema) %}
with current_version as (
  select runs.release, max(runs.version) as version
  from {{ p }}.{{ dbt_ppdp.ppdp_quote('runs') }} as runs
  join {{ p }}.{{ dbt_ppdp.ppdp_quote('releases') }} as releases on runs.release = releases.release
  where releases.output_schema = {{ dbt_ppdp.ppdp_literal(release_schema) }}
    and releases.output_name = {{ dbt_ppdp.ppdp_literal(release) }}
    and runs.status = 'succeeded'
  group by runs.release
), q as (
  select d.sa_key as sensitive_value, d.q
  from {{ p }}.{{ dbt_ppdp.ppdp_quote('distributions') }} as d
  join current_version on d.release = current_version.release and d.version = current_version.version
), cells as (
{% else %}
{% set s = dbt_ppdp.ppdp_quote(sensitive) %}
with q as (
  select {{ s }} as sensitive_value, count(*) * 1.0 / sum(count(*)) over () as q
  from {{ reference if reference is not none else model }}
  group by {{ s }}
), cells as (
{% endif %}
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
