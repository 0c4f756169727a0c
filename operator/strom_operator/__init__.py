"""The Strom Kubernetes operator: reconciles `FlinkJob` resources (group strom.io)."""
