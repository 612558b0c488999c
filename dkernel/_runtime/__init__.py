"""The plumbing every part of dkernel runs on, kept apart from the papers' methods.

=================== ==========================================================================
``client``          which Dask client to use, data shipped to the workers once, tasks run with
                    progress, the one place that starts a local cluster
``clusters``        cluster specs: one string that says where a computation runs
``options``         execution options of a Gram computation, in one object
``artifacts``       safe writing of the folders dkernel writes (stores, models, results)
``integrity``       the CRC-32C checksums of bytes, arrays and JSON records in what dkernel writes
``contents``        what dkernel writes inside each kind of folder, and what it did not
``memory``          a process's peak memory
``buffers``         block buffers owned by a worker process for the length of a run
``threads``         the BLAS thread count and the cores a process may use
``progress``        progress shown on stderr
``validation``      input checks shared by every module
``exports``         the lazily imported public names of a package
=================== ==========================================================================
"""
