package bundle

import "github.com/excloud/k8sapi/internal/artifacts"

// Artifacts and FoundingArch keep internal/founding's two old names
// compiling while that package is split (issue 37); the split imports
// internal/artifacts itself and removes these.
type Artifacts = artifacts.Set

// FoundingArch: see Artifacts.
const FoundingArch = artifacts.FoundingArch
