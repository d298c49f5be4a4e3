package workspace

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheEnv is oc-mirror's environment variable for the cache base directory,
// which airlock honours as --cache-dir.
const CacheEnv = "OC_MIRROR_CACHE"

// CacheDirName is the folder airlock keeps its shared cache in, inside the
// cache base directory (oc-mirror keeps its own in .oc-mirror/.cache).
const CacheDirName = ".airlock-cache"

// ResolveCacheDir returns the cache base directory from --cache-dir (flag) or
// $OC_MIRROR_CACHE: "" when neither is set (the catalog cache then stays in each
// working directory), an error when both are, as oc-mirror does.
func ResolveCacheDir(flag string) (string, error) {
	env := os.Getenv(CacheEnv)
	switch {
	case flag != "" && env != "":
		return "", fmt.Errorf("--cache-dir %s and $%s=%s are both set: give one", flag, CacheEnv, env)
	case flag != "":
		return filepath.Abs(flag)
	case env != "":
		return filepath.Abs(env)
	}
	return "", nil
}

// CatalogCacheDir is the catalog cache shared by every workspace that names
// the cache base directory base: BASE/.airlock-cache/operator-catalogs, laid
// out as a working directory's operator-catalogs (catalogs by digest, each
// extracted once, with its pruned catalogs).
func CatalogCacheDir(base string) string {
	return filepath.Join(base, CacheDirName, OperatorCatalogsDirName)
}
