"""The program of `attn learn translate --code`: the data generator and the models as attn runs
them (attn_cli/learn/translate_data.py and translate_model.py, their source), then the training
and the held-out evaluation, with the options written in. It needs numpy and PyTorch, nothing
of attn; printing it imports no torch (the modules are read as text).
"""

from __future__ import annotations

from pathlib import Path

from attn_cli.learn.common import KERNELS

PROGRAM_MAIN = """
# --- the run: attn learn translate --seed {seed} --steps {steps} --hidden {hidden} --max-len {max_len}

SEED, STEPS, HIDDEN, MAX_LEN = {seed}, {steps}, {hidden}, {max_len}
BATCH, LEARNING_RATE, CLIP, HELD_OUT_PER_LENGTH = {batch}, {rate}, {clip}, {per_length}


def tensors(pairs):
    import torch

    source = torch.tensor([pair.source for pair in pairs])
    target = torch.tensor([(*pair.target, EOS) for pair in pairs])
    previous = torch.cat([torch.full((len(pairs), 1), BOS), target[:, :-1]], dim=1)
    return source, target, previous


def main():
    corpus_ = corpus(SEED, MAX_LEN, HELD_OUT_PER_LENGTH)  # held-out sentences, never trained on
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads({threads})
    vocabulary = len(SOURCE_WORDS)
    models = {{name: Seq2Seq(vocabulary, vocabulary, HIDDEN, name == "attention")
              for name in ("fixed", "attention")}}
    optimisers = {{name: torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
                  for name, model in models.items()}}
    batches = corpus_.batches(BATCH)
    for step in range(1, STEPS + 1):
        _, batch = next(batches)  # the same batch for both models
        source, target, previous = tensors(batch)
        for name, model in models.items():
            model.train()
            logits, _, _ = model(source, previous)  # teacher forcing
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
            optimisers[name].zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            optimisers[name].step()
    for name, model in models.items():  # greedy translation of the held-out sentences
        model.eval()
        with torch.no_grad():
            for length, pairs in corpus_.held_out.items():
                source, target, previous = tensors(pairs)
                logits, _, _ = model(source, previous, greedy=True)
                exact = (logits.argmax(-1) == target).all(dim=1).float().mean().item()
                print(f"{{name}} length {{length}}: exact {{exact:.2f}}")
    model = models["attention"]  # the alignment score, reference words fed in
    hits = weight = count = 0
    with torch.no_grad():
        for pairs in corpus_.held_out.values():
            source, _, previous = tensors(pairs)
            _, weights, _ = model(source, previous)
            rows = weights[:, :-1]  # the end token has no source word
            true = torch.tensor([pair.alignment for pair in pairs]).unsqueeze(-1)
            hits += (rows.argmax(-1, keepdim=True) == true).sum().item()
            weight += rows.gather(2, true).sum().item()
            count += true.numel()
    print(f"alignment score: argmax share {{hits / count:.3f}}, mean weight {{weight / count:.3f}}")


if __name__ == "__main__":
    main()
"""


def program_text(
    *,
    seed: int,
    steps: int,
    hidden: int,
    max_len: int,
    batch: int,
    rate: float,
    clip: float,
    per_length: int,
    threads: int,
) -> str:
    """The program with these options written in."""
    parts = [
        "# attn learn translate --code: the training program, self-contained (numpy, torch).",
        "from __future__ import annotations",
        "",
        "import os",
        "",
        "# torch's and MKL's CPU kernels pinned, as attn learn pins them, before torch is imported",
        f"os.environ.update({dict(KERNELS)!r})",
        "",
    ]
    here = Path(__file__).parent  # read as text: printing the program imports no torch
    for name in ("translate_data", "translate_model"):
        source = (here / f"{name}.py").read_text(encoding="utf-8")
        source = source.replace("from __future__ import annotations\n", "")
        parts += [f"# --- {name} " + "-" * 60, source]
    parts.append(
        PROGRAM_MAIN.format(
            seed=seed, steps=steps, hidden=hidden, max_len=max_len, batch=batch, rate=rate,
            clip=clip, per_length=per_length, threads=threads,
        )
    )  # fmt: skip
    return "\n".join(parts)
