"""Where things are, for tests in any folder: the checkout, the installed package's data, shared/."""

from __future__ import annotations

from pathlib import Path

import ppdp

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(ppdp.__file__).resolve().parent
PACKAGE_DATA = PACKAGE / "engine" / "data"
ADULT = PACKAGE_DATA / "adult"
CATALOGUES = PACKAGE_DATA / "catalogues"
SHARED = REPO.parent / "shared"
