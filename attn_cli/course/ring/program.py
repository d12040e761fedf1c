"""attn ring --code: the ring as a program of its own, with P real processes.

The PyTorch program is the lesson's torch.distributed ring: start it with
``torchrun --nproc-per-node P ring.py`` (each process reads its rank from torchrun), or with
``python ring.py``, which starts the P processes itself as torchrun would (fork, loopback). The
numpy program is the same ring over OS pipes (multiprocessing), for a machine without PyTorch.
Both print, from process 0 once every process is done, the running max, sum and accumulator of
every merge, each process's rows, the gathered output and single-device attention to compare:
the same lines however they are started.
"""

from __future__ import annotations

from attn_cli.core.model import Walkthrough
from attn_cli.render.code_render import assignments, inputs_of, options_of

SHARDS = {
    "contiguous": [
        "cuts = {split}({arange}(n), P)",
        "shards = [[cuts[r]] for r in range(P)]  # process r: one run of n / P positions",
    ],
    "striped": ["shards = [[{arange}(r, n, P)] for r in range(P)]  # process r: r, r + P, ..."],
    "zigzag": [
        "cuts = {split}({arange}(n), 2 * P)",
        "shards = [[cuts[r], cuts[2 * P - 1 - r]] for r in range(P)]  # runs r and 2P - 1 - r",
    ],
}
NUMPY = {
    "library": "numpy, the blocks through OS pipes",
    "import": "import multiprocessing\nimport sys\nimport threading\n\nimport numpy as np",
    "split": "np.array_split",
    "arange": "np.arange",
    "cat": "np.concatenate",
    "full": "np.full",
    "zeros": "np.zeros",
    "where": "np.where",
    "sqrt": "np.sqrt(d_k)",
    "rowmax": "s.max(axis=-1, keepdims=True)",
    "rowsum": "p.sum(axis=-1, keepdims=True)",
    "maximum": "np.maximum",
    "exp": "np.exp",
    "tolist": "np.asarray({}).tolist()",
    "module": "np",
    "on": "",
    "mask_on": "",
}
TORCH = {
    "library": "PyTorch, the blocks through torch.distributed",
    "import": "import os\nimport socket\nimport sys\n\nimport torch\nimport torch.distributed as dist\n"
    "import torch.multiprocessing\nimport torch.nn.functional as F",
    "split": "torch.tensor_split",
    "arange": "torch.arange",
    "cat": "torch.cat",
    "full": "torch.full",
    "zeros": "torch.zeros",
    "where": "torch.where",
    "sqrt": "d_k**0.5",
    "rowmax": "s.amax(dim=-1, keepdim=True)",
    "rowsum": "p.sum(dim=-1, keepdim=True)",
    "maximum": "torch.maximum",
    "exp": "torch.exp",
    "tolist": "{}.tolist()",
    "module": "torch",
    "on": ", device=q.device",
    "mask_on": ".to(s.device)",
}


def _settings(walkthrough: Walkthrough) -> tuple[int, str, bool, bool]:
    options = options_of(walkthrough)
    return (
        int(options["processes"]),
        str(options.get("sharding") or "contiguous"),
        bool(options.get("causal", False)),
        bool(options.get("scale", True)),
    )


def _common(walkthrough: Walkthrough, x: dict[str, str], how: str) -> list[str]:
    """The docstring, the inputs, the shards and the merge: the same in both programs."""
    processes, sharding, causal, scale = _settings(walkthrough)
    given = inputs_of(walkthrough)
    what = "ring attention" + (" (causal)" if causal else "")
    lines = [
        f'"""attn ring: {what} over {processes} processes ({sharding} shards), in {x["library"]}.',
        "",
        how,
        '"""',
        x["import"],
        "",
        assignments({name: given[name] for name in ("Q", "K", "V")}, x["module"]),
        f"P = {processes}  # processes",
        f"causal = {causal}",
        "",
        "n, d_k = Q.shape",
        *(line.format(**x) for line in SHARDS[sharding]),
        "",
        "",
        "def scores_of(q, q_runs, k, k_runs):",
        '    """A process\'s queries against the block it holds: each tile (a run of queries, a',
        "    run of keys) not wholly in the queries' future; -inf elsewhere. Also how many scores",
        '    it computed."""',
        f"    q_pos, k_pos = {x['cat']}(q_runs), {x['cat']}(k_runs)",
        f"    s = {x['full']}((len(q_pos), len(k_pos)), -float('inf'), dtype=q.dtype{x['on']})",
        "    computed, q0 = 0, 0",
        "    for q_run in q_runs:",
        "        k0 = 0",
        "        for k_run in k_runs:",
        "            skipped = causal and len(q_run) and len(k_run) and k_run[0] > q_run[-1]",
        "            if len(q_run) and len(k_run) and not skipped:",
        "                rows, cols = slice(q0, q0 + len(q_run)), slice(k0, k0 + len(k_run))",
        "                s[rows, cols] = q[rows] @ k[cols].T"
        + (f" / {x['sqrt']}" if scale else ""),
        "                computed += len(q_run) * len(k_run)",
        "            k0 += len(k_run)",
        "        q0 += len(q_run)",
        "    if causal:  # no key after the query",
        f"        s = {x['where']}((k_pos[None, :] <= q_pos[:, None]){x['mask_on']}, s, -float('inf'))",
        "    return s, computed",
        "",
        "",
        "def ring(rank, exchange):",
        '    """Process `rank`: P rounds, each merging the block it holds into its running max,',
        "    sum and accumulator while the block moves on: `exchange(block, rows)` starts sending",
        "    the block to the next process and receiving the previous one's (of `rows` rows), and",
        '    returns what to call, after the merge, for the block received."""',
        "    mine = shards[rank]",
        f"    q = Q[{x['cat']}(mine)]",
        f"    block = {x['cat']}([K[{x['cat']}(mine)], V[{x['cat']}(mine)]], 1)  # keys | values",
        f"    row_max = {x['full']}((len(q), 1), -float('inf'), dtype=q.dtype{x['on']})",
        f"    row_sum = {x['zeros']}((len(q), 1), dtype=q.dtype{x['on']})",
        f"    acc = {x['zeros']}((len(q), V.shape[1]), dtype=q.dtype{x['on']})",
        "    lines = []",
        "    for t in range(P):",
        "        held = (rank - t) % P  # the block that started on process `held`",
        "        if t < P - 1:  # pass this block on while merging it",
        "            incoming = shards[(rank - t - 1) % P]",
        "            arrival = exchange(block, sum(len(run) for run in incoming))",
        "        s, computed = scores_of(q, mine, block[:, :d_k], shards[held])",
        "        if computed:  # else every tile lay in the future: nothing to merge",
        f"            new_max = {x['maximum']}(row_max, {x['rowmax']})",
        f"            rescale = {x['exp']}(row_max - new_max)  # what was summed, on the new max",
        f"            p = {x['exp']}(s - new_max)",
        f"            row_sum = rescale * row_sum + {x['rowsum']}",
        "            acc = rescale * acc + p @ block[:, d_k:]",
        "            row_max = new_max",
        '            name = f"round{t + 1}.process{rank}."',
        "            lines += [(name + 'max', row_max), (name + 'sum', row_sum), (name + 'acc', acc)]",
        "        if t < P - 1:",
        "            block = arrival()  # the next block, once it is here",
        "    lines.append((f'process{rank}.output', acc / row_sum))",
        "    return [(name, " + x["tolist"].format("value") + ") for name, value in lines]",
        "",
        "",
        "def report(everything):",
        '    """Process 0: every process\'s lines, merge by merge, then the gathered output."""',
        "    for t in range(P):",
        "        for rank in range(P):",
        "            for name, value in everything[rank]:",
        '                if name.startswith(f"round{t + 1}."):',
        "                    print(name, '=', value)",
        f"    gathered = {x['zeros']}((n, V.shape[1]), dtype=Q.dtype)",
        "    for rank in range(P):",
        "        name, rows = everything[rank][-1]",
        "        print(name, '=', rows)",
        f"        gathered[{x['cat']}(shards[rank])] = "
        + x["module"]
        + ".asarray(rows, dtype=Q.dtype)",
        "    print('gathered =', " + x["tolist"].format("gathered") + ")",
    ]
    return lines


def numpy_program(walkthrough: Walkthrough) -> str:
    _processes, _sharding, causal, scale = _settings(walkthrough)
    how = (
        "Run it with python: it starts the P processes itself (multiprocessing, fork: Linux or\n"
        "macOS), joined in a ring of pipes; this process gathers every process's lines and prints."
    )
    lines = _common(walkthrough, NUMPY, how)
    lines += [
        "    scores = Q @ K.T"
        + (" / np.sqrt(d_k)" if scale else "")
        + "  # one device, to compare",
    ]
    if causal:
        lines.append("    scores = scores + np.triu(np.full(scores.shape, -np.inf), k=1)")
    lines += [
        "    e = np.exp(scores - scores.max(axis=-1, keepdims=True))",
        "    check = e / e.sum(axis=-1, keepdims=True) @ V",
        "    print('check =', check.tolist())",
        "    print('output =', gathered.tolist())",
        "",
        "",
        "def process(rank, right, left, to_first):",
        "    def exchange(block, rows):",
        "        sender = threading.Thread(target=right.send, args=(block,))",
        "        sender.start()  # the block goes right while this process merges it",
        "",
        "        def arrival():",
        "            received = left.recv()  # the next one, from the left",
        "            sender.join()",
        "            return received",
        "",
        "        return arrival",
        "",
        "    to_first.send(ring(rank, exchange))",
        "",
        "",
        'if __name__ == "__main__":',
        '    context = multiprocessing.get_context("fork")',
        "    links = [context.Pipe() for _ in range(P)]  # links[r]: process r to process r + 1",
        "    reports = [context.Pipe() for _ in range(P)]",
        "    sys.stdout.flush()  # a forked process must not print what this one has not yet",
        "    started = []",
        "    for rank in range(P):",
        "        ends = (links[rank][0], links[(rank - 1) % P][1], reports[rank][0])",
        "        started.append(context.Process(target=process, args=(rank, *ends)))",
        "        started[-1].start()",
        "    report([reports[rank][1].recv() for rank in range(P)])",
        "    for each in started:",
        "        each.join()",
    ]
    return "\n".join(lines)


def torch_program(walkthrough: Walkthrough) -> str:
    processes, _sharding, causal, scale = _settings(walkthrough)
    gpu = walkthrough.device == "cuda"
    backend = "nccl" if gpu else "gloo"
    how = (
        f"Run it with torchrun, one process per {'GPU' if gpu else 'rank'}:\n"
        f"    torchrun --standalone --nproc-per-node {processes} ring.py\n"
        f"or with python ring.py, which starts the {processes} processes itself as torchrun "
        "would\n"
        f"(fork, over 127.0.0.1). The blocks move through torch.distributed's {backend}; process "
        "0\ngathers every process's lines and prints them."
    )
    lines = _common(walkthrough, TORCH, how)
    flags = (", is_causal=True" if causal else "") + ("" if scale else ", scale=1.0")
    lines += [
        f"    check = F.scaled_dot_product_attention(Q, K, V{flags})  # one device, to compare",
        "    print('check =', check.tolist())",
        "    print('output =', gathered.tolist())",
        "",
        "",
        "def process(rank):",
        "    torch.set_num_threads(1)  # as torchrun does: P processes share the cores",
    ]
    if gpu:
        lines += [
            '    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))  # this node\'s GPU',
            "    global Q, K, V",
            "    Q, K, V = Q.cuda(), K.cuda(), V.cuda()",
        ]
    lines += [f'    dist.init_process_group("{backend}", rank=rank, world_size=P)']
    lines += [
        "",
        "    def exchange(block, rows):",
        "        received = torch.empty((rows, block.shape[1]), dtype=block.dtype, device=block.device)",
        "        works = dist.batch_isend_irecv([  # started: the merge runs meanwhile",
        "            dist.P2POp(dist.isend, block.contiguous(), (rank + 1) % P),",
        "            dist.P2POp(dist.irecv, received, (rank - 1) % P),",
        "        ])",
        "",
        "        def arrival():",
        "            for work in works:",
        "                work.wait()",
        "            return received",
        "",
        "        return arrival",
        "",
        "    lines = ring(rank, exchange)",
        "    everything = [None] * P if rank == 0 else None",
        "    dist.gather_object(lines, everything, dst=0)",
        "    if rank == 0:",
        "        report(everything)",
        "    dist.destroy_process_group()",
        "",
        "",
        'if __name__ == "__main__":',
        '    if "RANK" in os.environ:  # started by torchrun, which set RANK and the rendezvous',
        '        process(int(os.environ["RANK"]))',
        "    else:  # python ring.py: start the P processes here, as torchrun would",
        "        with socket.socket() as free:",
        '            free.bind(("127.0.0.1", 0))',
        '            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free.getsockname()[1]))',
        "        sys.stdout.flush()  # a forked process must not print what this one has not yet",
        '        torch.multiprocessing.start_processes(process, nprocs=P, start_method="fork")',
    ]
    return "\n".join(lines)
