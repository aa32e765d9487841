package openapi

// markedOptional lists the fields of the served types whose +optional
// marker makes them optional although their json tag lacks omitempty.
// TestRequiredMarkersMatchSources checks this table against the sources of
// k8s.io/api and k8s.io/apimachinery.
var markedOptional = map[string]bool{
	"io.k8s.api.apps.v1.ControllerRevision.revision":                         true,
	"io.k8s.api.apps.v1.DaemonSetCondition.status":                           true,
	"io.k8s.api.apps.v1.DaemonSetCondition.type":                             true,
	"io.k8s.api.apps.v1.DeploymentCondition.status":                          true,
	"io.k8s.api.apps.v1.DeploymentCondition.type":                            true,
	"io.k8s.api.apps.v1.ReplicaSetCondition.status":                          true,
	"io.k8s.api.apps.v1.ReplicaSetCondition.type":                            true,
	"io.k8s.api.core.v1.AzureFilePersistentVolumeSource.secretNamespace":     true,
	"io.k8s.api.core.v1.ContainerImage.names":                                true,
	"io.k8s.api.core.v1.Event.reportingComponent":                            true,
	"io.k8s.api.core.v1.Event.reportingInstance":                             true,
	"io.k8s.api.core.v1.GRPCAction.service":                                  true,
	"io.k8s.api.core.v1.NodeRuntimeHandler.name":                             true,
	"io.k8s.api.core.v1.ProjectedVolumeSource.sources":                       true,
	"io.k8s.api.core.v1.TypedLocalObjectReference.apiGroup":                  true,
	"io.k8s.api.core.v1.TypedObjectReference.apiGroup":                       true,
	"io.k8s.api.discovery.v1.EndpointSlice.endpoints":                        true,
	"io.k8s.api.discovery.v1.EndpointSlice.ports":                            true,
	"io.k8s.api.networking.v1.IngressClassParametersReference.scope":         true,
	"io.k8s.api.policy.v1.PodDisruptionBudgetStatus.currentHealthy":          true,
	"io.k8s.api.policy.v1.PodDisruptionBudgetStatus.desiredHealthy":          true,
	"io.k8s.api.policy.v1.PodDisruptionBudgetStatus.disruptionsAllowed":      true,
	"io.k8s.api.policy.v1.PodDisruptionBudgetStatus.expectedPods":            true,
	"io.k8s.api.rbac.v1.ClusterRole.rules":                                   true,
	"io.k8s.api.rbac.v1.Role.rules":                                          true,
	"io.k8s.api.rbac.v1.RoleRef.apiGroup":                                    true,
	"io.k8s.api.scheduling.v1.PriorityClass.value":                           true,
	"io.k8s.api.storage.v1.CSINodeDriver.topologyKeys":                       true,
	"io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern.status":      true,
	"io.k8s.api.apps.v1.StatefulSetCondition.status":                         true,
	"io.k8s.api.apps.v1.StatefulSetCondition.type":                           true,
	"io.k8s.api.apps.v1.StatefulSetOrdinals.start":                           true,
	"io.k8s.api.apps.v1.StatefulSetSpec.serviceName":                         true,
	"io.k8s.api.apps.v1.StatefulSetStatus.availableReplicas":                 true,
	"io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus.currentMetrics": true,
}

// markedRequired lists the fields whose +required marker makes them
// required although their json tag says omitempty (checked by the same test).
var markedRequired = map[string]bool{
	"io.k8s.api.apps.v1.DaemonSet.spec":                           true,
	"io.k8s.api.apps.v1.Deployment.spec":                          true,
	"io.k8s.api.apps.v1.ReplicaSet.spec":                          true,
	"io.k8s.api.core.v1.ContainerRestartRule.action":              true,
	"io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes.operator": true,
	"io.k8s.api.core.v1.ImageVolumeStatus.imageRef":               true,
	"io.k8s.api.core.v1.PodCertificateProjection.keyType":         true,
	"io.k8s.api.core.v1.PodCertificateProjection.signerName":      true,
	"io.k8s.api.batch.v1.CronJob.spec":                            true,
	"io.k8s.api.apps.v1.StatefulSet.spec":                         true,
	"io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler.spec":      true,
	"io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler.spec":      true,
}
