package manifests

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// The UpdateService custom resource of the OpenShift Update Service operator
// (openshift/cincinnati-operator), as oc-mirror v2 writes it.
const (
	UpdateServiceAPIVersion = "updateservice.operator.openshift.io/v1"
	KindUpdateService       = "UpdateService"
	// UpdateServiceFile is its file in the cluster resources (oc-mirror's name).
	UpdateServiceFile = "updateService.yaml"
	// UpdateServiceName and UpdateServiceNamespace are oc-mirror's.
	UpdateServiceName      = "update-service-oc-mirror"
	UpdateServiceNamespace = "openshift-update-service"
	// UpdateServiceReplicas is oc-mirror's: with 2 or more the operator keeps
	// one pod running through voluntary disruptions.
	UpdateServiceReplicas = 2
)

// UpdateService is the operator's custom resource.
type UpdateService struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Spec       UpdateServiceSpec `json:"spec"`
}

// UpdateServiceSpec is what the operator deploys.
type UpdateServiceSpec struct {
	// Replicas is the number of pods.
	Replicas int32 `json:"replicas"`
	// Releases is the repository the release payloads are tagged in (no tag).
	Releases string `json:"releases"`
	// GraphDataImage is the image holding the graph data.
	GraphDataImage string `json:"graphDataImage"`
}

// BuildUpdateService is the UpdateService of a mirror: releases is the
// repository the payloads were mirrored to (MIRROR/openshift/release-images),
// graphImage the graph-data image as mirrored, by digest (REPO@sha256:…), so
// that the operator runs exactly the image built.
func BuildUpdateService(releases, graphImage string) (UpdateService, File, error) {
	if releases == "" || strings.ContainsAny(releases, "@") || strings.Contains(releases[strings.LastIndex(releases, "/")+1:], ":") {
		return UpdateService{}, File{}, fmt.Errorf("UpdateService: releases %q: want the payloads' repository, without tag or digest", releases)
	}
	if _, d, ok := strings.Cut(graphImage, "@"); !ok || !sha256Digest.MatchString(d) {
		return UpdateService{}, File{}, fmt.Errorf("UpdateService: graph-data image %q: want it by digest (REPO@sha256:…)", graphImage)
	}
	us := UpdateService{
		APIVersion: UpdateServiceAPIVersion, Kind: KindUpdateService,
		Metadata: ObjectMeta{Name: UpdateServiceName, Namespace: UpdateServiceNamespace},
		Spec:     UpdateServiceSpec{Replicas: UpdateServiceReplicas, Releases: releases, GraphDataImage: graphImage},
	}
	data, err := yaml.Marshal(us)
	if err != nil {
		return UpdateService{}, File{}, err
	}
	return us, File{Name: UpdateServiceFile, APIVersion: UpdateServiceAPIVersion, Kind: KindUpdateService, ObjectName: UpdateServiceName, Data: data}, nil
}
