"""Clients of a running JobManager: the REST client and the `strom submit/list/info/cancel` commands."""
