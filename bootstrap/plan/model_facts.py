"""Model profiles for the planner: from a GGUF header when one is at hand, else from the catalog's shape facts.

A header gives exact per-tensor bytes for one quant. The other quants of the same model share its shapes, so their
profiles scale the weight bytes by the file-size ratio (the KV cache and recurrent state do not depend on the
quant). With no header at all (offline, nothing downloaded), ``[models.shape]`` in the catalog gives the
hyper-parameters and the share of weight bytes in routed experts / embedding / output, spread evenly over layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from bootstrap.catalog.models import CatalogModel, ModelShape
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.plan.gguf_header import GGUFHeader, read_header
from bootstrap.plan.model_profile import HYBRID_ARCHES, LayerWeights, ModelProfile, model_profile
from bootstrap.plan.planner import Candidate


def _scaled(n: int, ratio: float) -> int:
    return round(n * ratio)


def scale_profile(profile: ModelProfile, file_size: int, reference_size: int) -> ModelProfile:
    """The profile of another quant of the same model, whose file is ``file_size`` bytes."""
    if reference_size <= 0 or file_size <= 0 or file_size == reference_size:
        return profile
    ratio = file_size / reference_size

    def scaled(blocks: tuple[LayerWeights, ...]) -> tuple[LayerWeights, ...]:
        return tuple(LayerWeights(lw.index, _scaled(lw.dense_bytes, ratio), _scaled(lw.expert_bytes, ratio),
                                  _scaled(lw.dense_repack, ratio), _scaled(lw.expert_repack, ratio))
                     for lw in blocks)

    return replace(profile, layers=scaled(profile.layers), mtp_layers=scaled(profile.mtp_layers),
                   token_embd_bytes=_scaled(profile.token_embd_bytes, ratio),
                   output_bytes=_scaled(profile.output_bytes, ratio), other_bytes=_scaled(profile.other_bytes, ratio),
                   total_weight_bytes=_scaled(profile.total_weight_bytes, ratio),
                   output_repack=_scaled(profile.output_repack, ratio),
                   weight_types=())  # another quant: other types (the speed model goes by its name)


def profile_from_shape(model: CatalogModel, file_size: int) -> ModelProfile:
    """A profile from the catalog's shape facts for a file of ``file_size`` bytes."""
    shape = model.shape
    if shape is None:
        raise UsageError(t("plan.err_no_shape", model=model.id), t("plan.hint_no_shape"))
    return _from_shape(model.architecture, shape, file_size)


def _from_shape(arch: str, shape: ModelShape, file_size: int) -> ModelProfile:
    n = shape.n_layer
    head = _head_blocks(shape, file_size)
    file_size -= sum(lw.dense_bytes + lw.expert_bytes for lw in head)
    token_embd = round(file_size * shape.token_embd_share)
    output = round(file_size * shape.output_share)
    experts = round(file_size * shape.expert_share)
    dense = max(0, file_size - token_embd - output - experts)
    # Blocks past n_layer (the MTP block of newer converts) hold no weights llama-server loads, but -ngl counts them.
    layers = tuple(LayerWeights(il, dense // n if il < n else 0, experts // n if il < n else 0)
                   for il in range(max(n, shape.block_count)))
    if arch in HYBRID_ARCHES:
        interval = max(1, shape.full_attention_interval)
        recurrent = tuple(il for il in range(n) if (il + 1) % interval != 0)
    else:
        recurrent = ()
    kv_layers = tuple(il for il in range(n) if il not in set(recurrent))
    return ModelProfile(
        architecture=arch, n_layer=n, n_embd=shape.n_embd, n_vocab=shape.n_vocab, n_ctx_train=shape.n_ctx_train,
        n_head=shape.n_head, n_head_kv=(shape.n_head_kv,) * n, key_length=shape.key_length,
        value_length=shape.value_length, n_expert=shape.n_expert, n_expert_used=shape.n_expert_used,
        kv_layers=kv_layers, swa_layers=(), n_swa=0, recurrent_layers=recurrent,
        recurrent_bytes_per_seq=shape.recurrent_bytes_per_seq if recurrent else 0, layers=layers,
        token_embd_bytes=token_embd, output_bytes=output, other_bytes=0,
        total_weight_bytes=sum(lw.dense_bytes + lw.expert_bytes for lw in layers) + token_embd + output,
        is_moe=shape.n_expert > 0 and experts > 0, n_ff=shape.n_ff, n_ff_exp=shape.n_ff_exp,
        ssm_conv_dim=shape.ssm_conv_dim, ssm_v_heads=shape.ssm_v_heads, mtp_layers=head,
    )


def _head_blocks(shape: ModelShape, file_size: int) -> tuple[LayerWeights, ...]:
    """The MTP head of a file of ``file_size`` bytes as the catalog states it (``mtp_share``), split like a trunk
    block into routed experts and the rest; one block per nextn layer."""
    n_head = max(0, shape.block_count - shape.n_layer)
    if shape.mtp_share <= 0 or n_head == 0:
        return ()
    per_block = round(file_size * shape.mtp_share) // n_head
    experts = round(per_block * shape.expert_share)
    return tuple(LayerWeights(il, per_block - experts, experts) for il in range(shape.n_layer, shape.block_count))


def _with_head(profile: ModelProfile, model: CatalogModel, size: int) -> ModelProfile:
    """A head-less profile (a base quant's header, scaled) given the head the catalog states for this file."""
    if profile.has_mtp or model.shape is None or model.shape.mtp_share <= 0:
        return profile
    head = _head_blocks(model.shape, size)
    if not head or profile.n_layer_all != model.shape.block_count:
        return profile
    return replace(scale_profile(profile, size - sum(lw.dense_bytes + lw.expert_bytes for lw in head), size),
                   mtp_layers=head)


def prefer_mtp_files(plain: Sequence[Candidate], with_head: Sequence[Candidate]) -> list[Candidate]:
    """Each quant's file with an MTP head first (taken only where the head can draft: ``requires_mtp``), then the
    same quant without it; quants the MTP repo lacks keep their place."""
    by_quant = {c.quant.lower(): replace(c, requires_mtp=True) for c in with_head if c.profile.has_mtp}
    out: list[Candidate] = []
    for candidate in plain:
        head = by_quant.get(candidate.quant.lower())
        if head is not None:
            out.append(head)
        out.append(candidate)
    return out


def _sampling_pairs(model: CatalogModel, thinking: bool) -> tuple[tuple[str, float], ...]:
    """Server-side sampling defaults as llama-server flag names (``--temp``, ``--top-p`` …), for thinking on or off
    (the model card recommends different ones)."""
    sampling = model.sampling_thinking if thinking else model.sampling
    if sampling is None:
        return ()
    return (("temp", sampling.temperature), ("top-p", sampling.top_p), ("top-k", float(sampling.top_k)),
            ("min-p", sampling.min_p), ("presence-penalty", sampling.presence_penalty))


def local_file(model: CatalogModel, path: str, models_dir: Path) -> Path | None:
    """A verified copy of ``path`` already in the home (``models/<repo>/<path>``), if any."""
    for repo in model.repos:
        candidate = models_dir / repo.repo / path
        if candidate.is_file():
            return candidate
    return None


def catalog_candidates(model: CatalogModel, quant: str | None, models_dir: Path | None,
                       reference: tuple[ModelProfile, int] | None = None, thinking: bool | None = None
                       ) -> list[Candidate]:
    """Candidates for a catalog model: the named quant only, or the default quant and every smaller one.

    Profiles come from the header of any quant already downloaded (exact), scaled to the others, else from
    ``reference`` (a profile and the file size it describes: a remote header read by the caller), else from the
    catalog's shape facts. ``thinking``: the server's thinking default (``install --thinking``), else the catalog's.
    """
    quants = [model.quant(quant)] if quant else list(model.quants_from_default_down())
    if models_dir is not None:
        for q in model.quants:
            found = local_file(model, q.file.path, models_dir)
            if found is not None:
                header = read_header(found)
                profile = model_profile(header)
                # The file size the header describes (a header-only file is much shorter than its real quant).
                reference = (profile, header.data_offset + profile.total_weight_bytes + profile.mtp_bytes)
                break
    mmproj = model.mmproj.size or 0 if model.mmproj else 0
    on = model.thinking_default if thinking is None else thinking
    thinks = model.thinks or thinking is not None  # --thinking on|off names a mode the user knows the model has
    out = []
    for q in quants:
        size = q.file.size or (reference[1] if reference else 0)
        if reference is not None:
            profile = _with_head(scale_profile(reference[0], size, reference[1]), model, size)
        else:
            profile = profile_from_shape(model, size)
        out.append(Candidate(model.id, model.title, q.name, q.file.path, size, profile, mmproj,
                             on, thinks, _sampling_pairs(model, on),
                             facts="header" if reference is not None else "catalog"))
    return out


def file_candidate(path: Path) -> Candidate:
    """The single candidate of a local GGUF file given as MODEL."""
    header = read_header(path)
    profile = model_profile(header)
    name = header.metadata.get("general.name") or path.stem
    size = path.stat().st_size
    return Candidate(path.stem, str(name), _file_type(header), str(path), size, profile, thinks=profile.thinks)


# general.file_type → label: llama.cpp's enum llama_ftype (include/llama.h, b11434); 4-6 and 33-35 were removed.
_FTYPES = (
    "F32", "F16", "Q4_0", "Q4_1", None, None, None, "Q8_0", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
    "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS", "IQ3_XXS", "IQ1_S",
    "IQ4_NL", "IQ3_S", "IQ3_M", "IQ2_S", "IQ2_M", "IQ4_XS", "IQ1_M", "BF16", None, None, None, "TQ1_0", "TQ2_0",
    "MXFP4_MOE", "NVFP4", "Q1_0", "Q2_0",
)


def _file_type(header: GGUFHeader) -> str:
    """A quant label for a bare file: ``general.file_type`` when the file states it (``Q4_K_M``), else the most
    common tensor type by bytes (``Q4_K``; a tied Q8_0 embedding can outweigh the Q4_K layers of a small model)."""
    ftype = header.metadata.get("general.file_type")
    if isinstance(ftype, int) and 0 <= ftype < len(_FTYPES) and _FTYPES[ftype]:
        return str(_FTYPES[ftype])
    by_type: dict[str, int] = {}
    for tensor in header.tensors:
        by_type[tensor.type_name] = by_type.get(tensor.type_name, 0) + tensor.nbytes
    return max(by_type, key=lambda k: by_type[k], default="?")
