"""``ppdp risk`` inside PostgreSQL gives ARX's TestRiskMetrics values on adult."""

from __future__ import annotations

import json

import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.app.cli import main
from tests.conftest import ADULT

pytestmark = pytest.mark.postgres

NINE = "age,education,marital-status,native-country,occupation,race,salary-class,sex,workclass"
ARX = {0.1: 0.27684993883653597, 0.2: 0.3577099234829125, 0.01: 0.1446083531167384}


def test_arx_values_on_postgres(postgres_database, capsys):
    con = connect(postgres_database)
    try:
        con.write_frame("public", "adult", pl.read_csv(ADULT / "adult.csv", separator=";"))
    finally:
        con.close()
    for fraction, dankar in ARX.items():
        assert main(["risk", "--table", "public.adult", "--db", postgres_database, "--qids", NINE,
                     "--sampling-fraction", str(fraction), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["prosecutor"]["average"] == pytest.approx(0.6465751607983555, abs=1e-9)
        assert out["prosecutor"]["highest"] == 1.0
        assert out["sample_uniques"] == pytest.approx(0.5142895033485844, abs=1e-9)
        assert out["population_uniques"]["dankar"] == pytest.approx(dankar, abs=1e-9)
