{# An identifier quoted for DuckDB and PostgreSQL, embedded quotes doubled (adapter.quote does
   not double them, and a column name is user text). #}
{% macro ppdp_quote(name) -%}
"{{ name | replace('"', '""') }}"
{%- endmacro %}

{% macro ppdp_column_list(columns) -%}
{%- if columns is string or columns | length == 0 -%}
{{ exceptions.raise_compiler_error("dbt_ppdp: quasi_identifiers must be a non-empty list of column names") }}
{%- endif -%}
{%- for c in columns -%}{{ dbt_ppdp.ppdp_quote(c) }}{% if not loop.last %}, {% endif %}{%- endfor -%}
{%- endmacro %}

{# A number argument checked before it reaches the SQL text. #}
{% macro ppdp_number(value, name) -%}
{%- if value is not number or value is boolean -%}
{{ exceptions.raise_compiler_error("dbt_ppdp: " ~ name ~ " must be a number, got " ~ value) }}
{%- endif -%}
{{ value }}
{%- endmacro %}

{# A string literal, embedded quotes doubled (release and schema names are user text). #}
{% macro ppdp_literal(text) -%}
'{{ text | replace("'", "''") }}'
{%- endmacro %}
