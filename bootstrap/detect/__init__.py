"""The detect stage (DESIGN.md §1): the hardware profile's records, the probes that fill them, and the doctor's checks.
Knows nothing about models.
"""
