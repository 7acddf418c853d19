"""Conformer ensembles and a Boltzmann-averaged target, made with RDKit.

Molecules are the first small, flexible, neutral ones in the NCI sample that RDKit ships
(`Data/NCI/first_5K.smi`). Each gets `M` conformers by ETKDG, relaxed with MMFF94; one per-conformer
property is the magnitude of the MMFF partial-charge dipole (Debye, all atoms), and its target is its
Boltzmann average under the MMFF energies at 298 K: a property of the ensemble that no single
conformer carries. A second property, the (mass-weighted, all-atom) radius of gyration, is the steric
kind that MARCEL's Kraken set averages the same way (Sterimol). The networks see heavy atoms only (positions, element, degree, hydrogens, ring
and hybridisation flags, bonds), padded to `MAX_ATOMS`. Generation takes about a minute, so the
arrays are cached under `data/training/cache/` keyed by every setting that shapes them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

CACHE_DIR = Path(__file__).resolve().parents[3] / "data" / "training" / "cache"
ELEMENTS = ("C", "N", "O", "F", "S", "Cl")
HYBRID = ("SP", "SP2", "SP3")
MAX_ATOMS = 12
KT_KCAL = 0.5925  # k_B * 298.15 K in kcal/mol
DEBYE_PER_E_ANGSTROM = 4.803
N_FEATURES = len(ELEMENTS) + 4 + 4 + 2 + len(HYBRID)
PROPERTIES = ("dipole", "gyration", "pbf")


def nci_smiles() -> Path:
    from rdkit import RDConfig

    return Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi"


def small_flexible(limit: int) -> list[str]:
    """The first `limit` single-fragment, neutral CHNOFSCl molecules with 6-12 heavy atoms and >= 2 rotors."""
    from rdkit import Chem, RDLogger
    from rdkit.Chem import Descriptors, rdMolDescriptors

    RDLogger.DisableLog("rdApp.*")
    out = []
    for line in nci_smiles().read_text().splitlines():
        mol = Chem.MolFromSmiles(line.split()[0]) if line.strip() else None
        if mol is None or len(Chem.GetMolFrags(mol)) > 1 or Descriptors.NumRadicalElectrons(mol):
            continue
        if any(a.GetSymbol() not in ELEMENTS or a.GetFormalCharge() for a in mol.GetAtoms()):
            continue
        if 6 <= mol.GetNumHeavyAtoms() <= MAX_ATOMS and rdMolDescriptors.CalcNumRotatableBonds(mol) >= 2:
            out.append(Chem.MolToSmiles(mol))
            if len(out) == limit:
                break
    return out


def atom_features(atom) -> list[float]:
    """Element, degree (1-4), hydrogens (0-3), aromatic, in ring, hybridisation: all topology, no geometry."""
    f = [float(atom.GetSymbol() == e) for e in ELEMENTS]
    f += [float(atom.GetDegree() == d) for d in (1, 2, 3, 4)]
    f += [float(atom.GetTotalNumHs() == h) for h in (0, 1, 2, 3)]
    f += [float(atom.GetIsAromatic()), float(atom.IsInRing())]
    f += [float(str(atom.GetHybridization()) == h) for h in HYBRID]
    return f


def embed(smiles: str, m: int, seed: int) -> dict | None:
    """M MMFF-relaxed ETKDG conformers of one molecule with energies and properties; None if embedding fails."""
    from rdkit import Chem
    from rdkit.Chem import AllChem, rdDistGeom, rdMolDescriptors

    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    params = rdDistGeom.ETKDGv3()
    params.randomSeed = seed + 1  # RDKit treats seed 0 specially: every conformer comes out identical
    cids = list(rdDistGeom.EmbedMultipleConfs(mol, m, params))
    props = AllChem.MMFFGetMoleculeProperties(mol)
    if len(cids) < m or props is None:
        return None
    energies = np.array([e for _, e in AllChem.MMFFOptimizeMoleculeConfs(mol, maxIters=500)])
    charges = np.array([props.GetMMFFPartialCharge(i) for i in range(mol.GetNumAtoms())])
    heavy = [a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() > 1]
    pos, props_ = [], []
    for cid in cids:
        xyz = mol.GetConformer(cid).GetPositions()
        dipole = np.linalg.norm((charges[:, None] * (xyz - xyz.mean(0))).sum(0)) * DEBYE_PER_E_ANGSTROM
        props_.append([dipole, rdMolDescriptors.CalcRadiusOfGyration(mol, confId=cid),
                       rdMolDescriptors.CalcPBF(mol, confId=cid)])
        pos.append(xyz[heavy])
    index = {h: i for i, h in enumerate(heavy)}
    bonds = [(index[b.GetBeginAtomIdx()], index[b.GetEndAtomIdx()]) for b in mol.GetBonds()
             if b.GetBeginAtomIdx() in index and b.GetEndAtomIdx() in index]
    return {"pos": np.stack(pos), "energy": energies - energies.min(), "props": np.array(props_),
            "features": np.array([atom_features(mol.GetAtomWithIdx(h)) for h in heavy]), "bonds": bonds}


def boltzmann(values: np.ndarray, energies: np.ndarray, kt: float = KT_KCAL) -> np.ndarray:
    """Energy-weighted average over the last axis: sum_c v_c exp(-E_c/kT) / sum_c exp(-E_c/kT)."""
    w = np.exp(-(energies - energies.min(-1, keepdims=True)) / kt)
    return (values * w).sum(-1) / w.sum(-1)


@dataclass
class Ensembles:
    """Padded arrays: pos [K,M,N,3], features [K,N,F], adj [K,N,N], mask [K,N], energy [K,M],
    per_conformer [K,M,P] and their Boltzmann averages targets [K,P]; `target` is the chosen property's."""

    smiles: list[str]
    pos: torch.Tensor
    features: torch.Tensor
    adj: torch.Tensor
    mask: torch.Tensor
    energy: torch.Tensor
    per_conformer: torch.Tensor
    targets: torch.Tensor
    which: int = 0

    def __len__(self) -> int:
        return len(self.smiles)

    @property
    def target(self) -> torch.Tensor:
        return self.targets[:, self.which]

    @property
    def conformer_values(self) -> torch.Tensor:
        return self.per_conformer[..., self.which]

    def subset(self, idx: torch.Tensor) -> Ensembles:
        i = idx.tolist()
        return Ensembles([self.smiles[j] for j in i], self.pos[idx], self.features[idx], self.adj[idx],
                         self.mask[idx], self.energy[idx], self.per_conformer[idx], self.targets[idx], self.which)

    def for_property(self, name: str) -> Ensembles:
        return replace(self, which=PROPERTIES.index(name))


def build(n_molecules: int, m: int, seed: int = 0, progress=None) -> Ensembles:
    """Generate (or load from the cache) `n_molecules` ensembles of `m` conformers each."""
    key = json.dumps({"v": 3, "n": n_molecules, "m": m, "seed": seed, "max_atoms": MAX_ATOMS,
                      "source": nci_smiles().stat().st_size})
    path = CACHE_DIR / f"spice_{hashlib.sha1(key.encode()).hexdigest()[:12]}.npz"
    if path.is_file():
        d = np.load(path, allow_pickle=False)
        arrays = {k: torch.from_numpy(d[k]) for k in ("pos", "features", "adj", "mask", "energy", "per_conformer",
                                                      "targets")}
        return Ensembles(d["smiles"].tolist(), **arrays)
    candidates = small_flexible(int(n_molecules * 1.2) + 10)
    loop = progress(candidates, desc="conformers", total=len(candidates)) if progress else candidates
    rows, smiles = [], []
    for i, smi in enumerate(loop):
        if len(rows) == n_molecules:
            break
        r = embed(smi, m, seed * 100_003 + i)
        if r is not None:
            rows.append(r)
            smiles.append(smi)
    k = len(rows)
    pos = np.zeros((k, m, MAX_ATOMS, 3), np.float32)
    feats = np.zeros((k, MAX_ATOMS, N_FEATURES), np.float32)
    adj = np.zeros((k, MAX_ATOMS, MAX_ATOMS), np.float32)
    mask = np.zeros((k, MAX_ATOMS), bool)
    for j, r in enumerate(rows):
        n = r["features"].shape[0]
        pos[j, :, :n], feats[j, :n], mask[j, :n] = r["pos"], r["features"], True
        for a, b in r["bonds"]:
            adj[j, a, b] = adj[j, b, a] = 1.0
    energy = np.stack([r["energy"] for r in rows]).astype(np.float32)
    props = np.stack([r["props"] for r in rows])                                  # [K,M,P]
    targets = boltzmann(props.transpose(0, 2, 1), energy.astype(np.float64)[:, None]).astype(np.float32)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, smiles=np.array(smiles), pos=pos, features=feats, adj=adj, mask=mask,
                        energy=energy, per_conformer=props.astype(np.float32), targets=targets)
    return build(n_molecules, m, seed)
