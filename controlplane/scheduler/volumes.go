package scheduler

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	fw "berth/controlplane/scheduler/framework"
	"berth/controlplane/scheduler/plugins/noderesources"
	"berth/controlplane/scheduler/plugins/volumebinding"
)

// addVolumeBinding builds the VolumeBinding plugin on the scheduler's
// informers and adds it to the profile: PreFilter, Filter right after
// NodeResourcesFit (upstream's order), and PreBind. Parked pods are retried
// whenever a claim, volume, storage class or CSINode changes, since any of
// them may make a pod's volumes fit.
func (s *Scheduler) addVolumeBinding() error {
	core, storage := s.cfg.Informers.Core().V1(), s.cfg.Informers.Storage().V1()
	plugin, err := volumebinding.New(volumebinding.Config{
		Claims: core.PersistentVolumeClaims().Lister(), Volumes: core.PersistentVolumes().Lister(),
		Classes: storage.StorageClasses().Lister(), CSINodes: storage.CSINodes().Lister(), Nodes: core.Nodes().Lister(),
		Client: s.cfg.Client,
	})
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	p := s.algorithm.Profile
	p.PreFilter = append(p.PreFilter, plugin)
	at := len(p.Filter)
	for i, f := range p.Filter {
		if f.Name() == noderesources.FitName {
			at = i + 1
		}
	}
	p.Filter = append(p.Filter[:at:at], append([]fw.FilterPlugin{plugin}, p.Filter[at:]...)...)
	p.PreBind = append(p.PreBind, plugin)
	retry := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.queue.MoveAllToActiveOrBackoffQueue(nil) },
		UpdateFunc: func(any, any) { s.queue.MoveAllToActiveOrBackoffQueue(nil) },
	}
	for _, inf := range []cache.SharedIndexInformer{
		core.PersistentVolumeClaims().Informer(), core.PersistentVolumes().Informer(),
		storage.StorageClasses().Informer(), storage.CSINodes().Informer(),
	} {
		if _, err := inf.AddEventHandler(retry); err != nil {
			return fmt.Errorf("scheduler: volume event handler: %w", err)
		}
		s.synced = append(s.synced, inf.HasSynced)
	}
	return nil
}
