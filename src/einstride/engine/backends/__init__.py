"""The backends, one folder each, found through :mod:`einstride.engine.registry`:
:mod:`.numpy` (the default) and :mod:`.dask` (imported only for Dask operands)."""
