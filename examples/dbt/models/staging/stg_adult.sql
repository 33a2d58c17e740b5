-- The source of the release: one row per person, keyed by id.
select id, age, sex, race, marital_status, education, salary_class
from {{ ref('adult_sample') }}
