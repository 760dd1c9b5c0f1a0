"""DAS (distributed acoustic sensing): fibres and strain-rate receivers of :func:`sweep.elastic`.

``sweep.elastic(..., receiver_kind="exx")`` records point strain rates at
nodes (kinds ``"exx"``, ``"ezz"``, ``"exz"``, and in 3D ``"eyy"``, ``"eyz"``,
``"exy"``); ``fibre=Fibre(...)`` adds a fibre's channels, each its axial
strain rate (or a helically wound fibre's response); ``gauge_length=``
averages over the gauge and ``quantity="strain"`` integrates in time.  See
``docs/elastic.md`` (section DAS).
"""

from __future__ import annotations

from .equations.elastic.das import Fibre, helical_response

__all__ = ["Fibre", "helical_response"]
