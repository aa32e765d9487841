package aggregator

import (
	"context"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// AuthenticationConfigMap is kube-system's ConfigMap extension apiservers
// (k8s.io/apiserver's delegated authentication) read to trust client
// certificates and the front proxy's headers.
const AuthenticationConfigMap = "extension-apiserver-authentication"

// The front-proxy headers, as kube-apiserver's --requestheader-* defaults
// (kubeadm's).
var (
	usernameHeaders    = []string{"X-Remote-User"}
	uidHeaders         = []string{"X-Remote-Uid"}
	groupHeaders       = []string{"X-Remote-Group"}
	extraHeaderPrefix  = []string{"X-Remote-Extra-"}
	defaultProxyNames  = []string{"front-proxy-client"}
	authenticationKeys = []string{"client-ca-file", "requestheader-client-ca-file", "requestheader-allowed-names",
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers", "requestheader-extra-headers-prefix"}
)

// authenticationData is the ConfigMap's data, in kube-apiserver's keys
// and formats (PEM bundles, JSON string lists).
func (a *Aggregator) authenticationData() map[string]string {
	list := func(v []string) string {
		b, _ := json.Marshal(v) // a []string always marshals
		return string(b)
	}
	names := a.cfg.FrontProxyAllowedNames
	if names == nil {
		names = defaultProxyNames
	}
	data := map[string]string{}
	if len(a.cfg.ClientCAPEM) > 0 {
		data["client-ca-file"] = string(a.cfg.ClientCAPEM)
	}
	if len(a.cfg.FrontProxyCAPEM) > 0 {
		data["requestheader-client-ca-file"] = string(a.cfg.FrontProxyCAPEM)
		data["requestheader-allowed-names"] = list(names)
		data["requestheader-username-headers"] = list(usernameHeaders)
		if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.RemoteRequestHeaderUID) {
			data["requestheader-uid-headers"] = list(uidHeaders)
		}
		data["requestheader-group-headers"] = list(groupHeaders)
		data["requestheader-extra-headers-prefix"] = list(extraHeaderPrefix)
	}
	return data
}

// writeAuthenticationConfigMap creates or corrects
// kube-system/extension-apiserver-authentication; keys other than its own
// are left as they are.
func (a *Aggregator) writeAuthenticationConfigMap(ctx context.Context) error {
	want := a.authenticationData()
	cms := a.kube.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	have, err := cms.Get(ctx, AuthenticationConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: AuthenticationConfigMap, Namespace: metav1.NamespaceSystem}, Data: want}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	data := maps.Clone(have.Data)
	if data == nil {
		data = map[string]string{}
	}
	for _, k := range authenticationKeys {
		delete(data, k)
	}
	maps.Copy(data, want)
	if maps.Equal(data, have.Data) {
		return nil
	}
	updated := have.DeepCopy()
	updated.Data = data
	_, err = cms.Update(ctx, updated, metav1.UpdateOptions{})
	return err
}
