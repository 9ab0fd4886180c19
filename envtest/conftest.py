"""Integration tests: a real kube-apiserver and etcd (see reconcilekit.envtest)."""
