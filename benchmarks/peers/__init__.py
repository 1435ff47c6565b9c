"""The peers' side of benchmarks/compare_peers.py and minimd.py: the job scripts each peer
code runs in its own environment (.peers/, `make peers`), and job.py, the input and the
checksums they share with hybridfd's side. Only numpy and mpi4py at their top: a peer's
environment need not have hybridfd."""
