"""Real servers on loopback for the tests, the benchmarks and the screenshot script: Daphne,
redis-server, a throwaway PostgreSQL cluster, nx-27017 (MongoDB wire), Debian's nginx with
docs/deploy.md's config, and Chromium's flags.

Its own package, below both ``tests`` and ``bench``: the tests import the benchmarks (to test
them) and both import these helpers, so nothing imports ``tests`` but pytest.
"""
