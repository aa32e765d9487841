package up

import "testing"

// The cluster DNS listens on the pod bridge's gateway, host-local's default:
// the pod CIDR's first address.
func TestClusterDNSAddrIsTheBridgeGateway(t *testing.T) {
	for cidr, want := range map[string]string{"10.42.0.0/24": "10.42.0.1:53", "10.223.7.0/24": "10.223.7.1:53", "192.168.4.0/30": "192.168.4.1:53"} {
		if got := clusterDNSAddr(cidr).String(); got != want {
			t.Errorf("clusterDNSAddr(%s) = %s, want %s", cidr, got, want)
		}
	}
}
