"""The spec layer, shared by every backend and importing none: equations parsed and bound to
shapes (:mod:`.equation`), the dtype rules (:mod:`.dtypes`), contraction paths
(:mod:`.paths`) and the path walk (:mod:`.walk`)."""
