"""The island model shared by every population-based optimizer (ID-DGA §4.1, Algorithm 1).

The whole population is divided into ``islands`` sub-populations that evolve independently;
every ``migration_interval`` (MI) generations each island sends its best individual to the next
island on a ring (docs/design/paper_notes.md §4). One island is the ordinary single-population algorithm.

Modules (none imports one that imports it back):

* ``params``: ``COMMON_DEFAULTS`` (the options every such optimizer takes) and ``parse_params``.
* ``island``: ``Island``, one sub-population; an algorithm subclasses it and writes
  ``generation()`` (GA, DE, ID-DGA, HAEF ...). ``Individual``, ``EpochReport``, ``IslandSpec``.
* ``executors``: what runs the islands of a run (in this process, in worker processes joined
  in a ring of pipes, or as Ray actors); ``executors.pool`` keeps worker processes.
* ``runtime``: ``IslandRuntime``, the worker pools runs take their workers from and what they
  measured; an object with a lifecycle (create, use, close), no module state but the default
  instance.
* ``auto``: ``choose_executor``, which executor a run uses (``executor = "auto"``: worker
  processes only when an estimate says they pay).
* ``master``: ``run_islands``, the master of Algorithm 1 (merging the islands' reports,
  timings, diversity).

Reproducibility: island i draws from ``np.random.SeedSequence(seed).spawn(islands)[i]`` only,
so a seed gives the same result with every executor and any scheduling.
"""
