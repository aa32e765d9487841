package secret

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func TestStringDataIsMergedIntoData(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	for name, prepare := range map[string]func(*v1.Secret){
		"create": func(sec *v1.Secret) { s.PrepareForCreate(context.Background(), sec) },
		"update": func(sec *v1.Secret) { s.PrepareForUpdate(context.Background(), sec, &v1.Secret{}) },
	} {
		t.Run(name, func(t *testing.T) {
			sec := &v1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
				Data:       map[string][]byte{"kept": []byte("k"), "both": []byte("from data")},
				StringData: map[string]string{"both": "from stringData", "new": "n"},
			}
			prepare(sec)
			want := map[string]string{"kept": "k", "both": "from stringData", "new": "n"}
			if len(sec.Data) != len(want) {
				t.Fatalf("data %v, want %v", sec.Data, want)
			}
			for k, v := range want {
				if string(sec.Data[k]) != v {
					t.Errorf("data[%q] = %q, want %q", k, sec.Data[k], v)
				}
			}
			if sec.StringData != nil {
				t.Errorf("stringData %v is stored, want it write-only", sec.StringData)
			}
			if errs := s.Validate(context.Background(), sec); len(errs) != 0 {
				t.Errorf("the merged secret does not validate: %v", errs)
			}
		})
	}
}

func TestStringDataOnlySecret(t *testing.T) {
	sec := &v1.Secret{StringData: map[string]string{"password": "p"}}
	mergeStringData(sec)
	if string(sec.Data["password"]) != "p" || sec.StringData != nil {
		t.Fatalf("data %v stringData %v", sec.Data, sec.StringData)
	}
}
