package defaults

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// FlowSchema applies upstream's v1 defaults: matchingPrecedence 1000.
func FlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = 1000
	}
}

// PriorityLevelConfiguration applies upstream's v1 defaults: an exempt
// level's nominalConcurrencyShares and lendablePercent 0; a limited level's
// nominalConcurrencyShares 30 and lendablePercent 0; queuing with 64 queues,
// hand size 8 and queue length limit 50.
func PriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	zero := func(p **int32, v int32) {
		if *p == nil {
			*p = &v
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		zero(&e.NominalConcurrencyShares, 0)
		zero(&e.LendablePercent, 0)
	}
	if l := pl.Spec.Limited; l != nil {
		zero(&l.NominalConcurrencyShares, 30)
		zero(&l.LendablePercent, 0)
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = 8
			}
			if q.Queues == 0 {
				q.Queues = 64
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = 50
			}
		}
	}
}
