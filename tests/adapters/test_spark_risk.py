"""``ppdp risk``'s SQL in Spark: ARX's TestRiskMetrics values on adult, and the
journalist join (null-safe equality in Spark's dialect) against a population table."""

from __future__ import annotations

import uuid

import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.risk import assess
from tests.conftest import ADULT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NINE = ["age", "education", "marital-status", "native-country", "occupation", "race", "salary-class", "sex", "workclass"]


def test_arx_values_and_journalist_on_spark(spark_url):
    frame = pl.read_csv(ADULT / "adult.csv", separator=";")
    schema = f"risk_{uuid.uuid4().hex[:8]}"
    con = connect(spark_url)
    try:
        con.execute(f"CREATE SCHEMA `{schema}`")
        con.write_frame(schema, "adult", frame)
        con.write_frame(schema, "sample", frame.head(3000))
        rel = f"`{schema}`.`adult`"
        a = assess(con, rel, NINE, sampling_fraction=0.1, attributes=False)
        assert a.to_json()["prosecutor"]["average"] == pytest.approx(0.6465751607983555, abs=1e-9)
        assert a.to_json()["sample_uniques"] == pytest.approx(0.5142895033485844, abs=1e-9)
        assert a.to_json()["population_uniques"]["dankar"] == pytest.approx(0.27684993883653597, abs=1e-9)
        j = assess(con, f"`{schema}`.`sample`", ["sex", "race"], population_table=rel)
        counts = frame.group_by("sex", "race").len()
        smallest = counts.join(frame.head(3000).select("sex", "race").unique(), on=["sex", "race"])["len"].min()
        assert j.to_json()["journalist"]["highest"] == pytest.approx(1.0 / smallest)
    finally:
        con.close()
