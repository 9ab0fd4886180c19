"""A real kube-apiserver and etcd for tests, started like controller-runtime's envtest.

Ports: sigs.k8s.io/controller-runtime/pkg/envtest
"""
