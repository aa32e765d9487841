package critest

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func (r *runtimeService) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       r.s.runtimeName,
		RuntimeVersion:    r.s.runtimeVersion,
		RuntimeApiVersion: "v1",
	}, nil
}

func (r *runtimeService) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	conds := make([]*runtimeapi.RuntimeCondition, len(s.conditions))
	for i, c := range s.conditions {
		conds[i] = proto.Clone(c).(*runtimeapi.RuntimeCondition)
	}
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: conds}}
	if req.GetVerbose() {
		cfg, _ := json.Marshal(map[string]string{"runtime": "critest", "sandboxImage": s.sandboxImage})
		resp.Info = map[string]string{"config": string(cfg)}
	}
	return resp, nil
}

func (r *runtimeService) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podCIDR = req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
