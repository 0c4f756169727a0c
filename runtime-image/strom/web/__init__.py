"""The web dashboard's files (no Python): index.html, ES modules, a stylesheet and vendor/ (dagre).

Served by the JobManager's REST endpoint (strom.runtime.jobmanager.web_dashboard) at `/`; shipped as
package data, so `pip install strom` carries the whole dashboard and it needs no internet access.
"""
