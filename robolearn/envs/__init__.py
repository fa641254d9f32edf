"""The former name of :mod:`robolearn.robots` (robot scene configs), kept so that imports
written before the rename keep working."""
