package customresource

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestDeprecationWarning(t *testing.T) {
	spec := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinitionSpec {
		return apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget"}, Versions: versions}
	}
	v := func(name string, served, deprecated bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Deprecated: deprecated}
	}
	cases := []struct {
		name string
		spec apiextensionsv1.CustomResourceDefinitionSpec
		want string
	}{
		{"newest served replacement", spec(v("v1beta1", true, true), v("v1", true, false), v("v2", true, false)),
			"example.com/v1beta1 Widget is deprecated; use example.com/v2 Widget"},
		{"unserved and deprecated ones skipped", spec(v("v1beta1", true, true), v("v1", true, false), v("v2", false, false), v("v3", true, true)),
			"example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"},
		{"no newer version", spec(v("v1beta1", true, true), v("v1alpha1", true, false)),
			"example.com/v1beta1 Widget is deprecated"},
	}
	for _, c := range cases {
		if got := deprecationWarning("v1beta1", c.spec); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
