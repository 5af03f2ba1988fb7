"""The team gateway (issue 28, docs/team-endpoint.md): one endpoint for a team over several member installs.

Above ``install/`` (DESIGN.md §1): its record and keys (``config``), the members' own answers (``members``) and the
router it runs, nginx (``gateway``), rendered from ``templates/team-nginx.conf.j2``.
"""
