package kube

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"unicode/utf8"
)

// applyAnnotationLimit is the size of the annotations of an object: kubectl
// apply (client side) keeps the whole object in one.
const applyAnnotationLimit = 256 << 10

// partSize is the plan bytes one ConfigMap of a split plan holds (the limit,
// less room for the key).
const partSize = ConfigMapLimit - 4<<10

// planPartsLimit is MaxPlanParts (tests lower it).
var planPartsLimit = MaxPlanParts

// PlanPartKey is the key of part i of a split compressed plan: plan.json.gz.000.
func PlanPartKey(i int) string { return fmt.Sprintf("%s.%03d", PlanGzKey, i) }

// configMaps returns the ConfigMaps holding the configuration (with the
// registries.conf when there is one) and the plan,
// and the plan's file name in the pods' config folder: the plan as it is
// when the two fit one ConfigMap (and the plan is text); else compressed (gzip) as binary data;
// else compressed and split over ConfigMaps of its own (at most MaxPlanParts).
func (o *JobOptions) configMaps() ([]ConfigMap, string, error) {
	cm := ConfigMap{
		TypeMeta:   TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: o.meta(o.Name, "config"),
		Data:       map[string]string{ConfigKey: string(o.Config)},
	}
	base := len(ConfigKey) + len(o.Config)
	if o.RegistriesConf != nil {
		cm.Data[RegistriesConfKey] = string(o.RegistriesConf)
		base += len(RegistriesConfKey) + len(o.RegistriesConf)
	}
	if base > partSize {
		return nil, "", fmt.Errorf("the configuration alone is %d bytes, %w (%d bytes): Kubernetes refuses it; split the ImageSetConfiguration into smaller ones, each with its own plan and Job", len(o.Config), ErrTooBig, ConfigMapLimit)
	}
	if base+len(PlanKey)+len(o.Plan) <= ConfigMapLimit && utf8.Valid(o.Plan) {
		cm.Data[PlanKey] = string(o.Plan)
		return []ConfigMap{cm}, PlanKey, nil
	}
	gz, err := gzipBytes(o.Plan)
	if err != nil {
		return nil, "", err
	}
	if base+len(PlanGzKey)+len(gz) <= ConfigMapLimit {
		cm.BinaryData = map[string][]byte{PlanGzKey: gz}
		return []ConfigMap{cm}, PlanGzKey, nil
	}
	n := (len(gz) + partSize - 1) / partSize
	if n > planPartsLimit {
		return nil, "", fmt.Errorf("the plan is %d bytes, %d compressed: %d ConfigMaps of 1 MiB, more than %d, %w; serve the plan another way (run the shards outside the cluster, or split the ImageSetConfiguration into smaller ones, each with its own plan and Job)",
			len(o.Plan), len(gz), n, planPartsLimit, ErrTooBig)
	}
	cms := []ConfigMap{cm}
	for i := range n {
		part := ConfigMap{
			TypeMeta:   TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: o.meta(o.planPartName(i), "plan"),
			BinaryData: map[string][]byte{PlanPartKey(i): gz[i*partSize : min((i+1)*partSize, len(gz))]},
		}
		cms = append(cms, part)
	}
	return cms, PlanGzKey, nil
}

func (o *JobOptions) planPartName(i int) string { return fmt.Sprintf("%s-plan-%03d", o.Name, i) }

// configVolume mounts the configuration and the plan: the ConfigMap, or all of
// them projected into one folder when the plan is split.
func (o *JobOptions) configVolume() Volume {
	if o.planParts == 0 {
		return Volume{Name: "config", ConfigMap: &ConfigMapVolumeSource{Name: o.Name}}
	}
	p := &ProjectedVolumeSource{Sources: []VolumeProjection{{ConfigMap: &ConfigMapProjection{Name: o.Name}}}}
	for i := range o.planParts {
		p.Sources = append(p.Sources, VolumeProjection{ConfigMap: &ConfigMapProjection{Name: o.planPartName(i)}})
	}
	return Volume{Name: "config", Projected: p}
}

// gzipBytes compresses b the same way every time (no name, no time).
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
