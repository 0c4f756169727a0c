"""The Strom Kubernetes operator: reconciles `FlinkJob` resources (group strom.io).

The handlers live in `strom_operator.handlers` (`kopf run -m strom_operator.handlers`, or the
`strom-operator` command). `kopf run -m strom_operator` works too: when kopf is what imports this
package, the handlers are registered here. Otherwise importing the package does not import kopf,
so the pure modules (builders, lifecycle, validation) stay usable without it.
"""

import sys

if "kopf" in sys.modules:
    from strom_operator import handlers as handlers  # registers the kopf handlers
