"""Hypothesis profiles: `ci` (what `.ci/run` uses) draws the same examples on every run, with no
time limit per example and no database of earlier failures, so a red CI is reproducible and
never the machine's load; the default draws new ones each time, which is how local runs keep
finding cases."""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
