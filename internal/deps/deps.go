package deps

import (
	_ "github.com/container-storage-interface/spec/lib/go/csi"
	_ "github.com/containernetworking/cni/libcni"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/vishvananda/netlink"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "google.golang.org/grpc"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apiserver/pkg/storage/etcd3"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	_ "sigs.k8s.io/yaml"
)
