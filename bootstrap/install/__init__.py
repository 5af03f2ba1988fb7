"""The orchestrator: one run of the whole pipeline under the home's lock — recovery, the rerun check, the fetch
plan, switch-over with swap and rollback, cleanup — plus installing from a bundle, the status report and uninstalling.
"""
