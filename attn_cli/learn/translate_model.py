"""The two encoder-decoders of `attn learn translate`, in PyTorch, as the lectures draw them.

Both read the source with the same bidirectional GRU encoder, h_i = [→h_i ; ←h_i] (width
d_h = 2d), and decode with the same GRU cell and read-out; they differ only in the context c_t
each decoder step gets:

- the fixed-vector model: c_t = h_n for every t, the encoder's final states (forward after the
  last word, backward after the first): the whole sentence in one vector;
- Bahdanau's: e_{t,i} = vᵀ tanh(W1 h_i + W2 s_{t−1}), α_t = softmax(e_t), c_t = Σ_i α_{t,i} h_i
  (W1 = U_a, W2 = W_a, v = v_a of the paper, in `attn bahdanau`'s names; no biases, as there).

Then s_t = GRU(s_{t−1}, [y_{t−1} ; c_t]) and the next word's scores are W_o [s_t ; c_t] + b_o;
s_0 = tanh(W_init h_n + b_init). Imported only when `attn learn translate` runs.
"""

from __future__ import annotations

import torch
from torch import nn


class Seq2Seq(nn.Module):
    """An encoder-decoder with Bahdanau's attention (``attention=True``) or the fixed vector."""

    def __init__(self, source_vocab: int, target_vocab: int, hidden: int, attention: bool) -> None:
        super().__init__()
        d, d_h = hidden, 2 * hidden
        self.attention = attention
        self.source_embedding = nn.Embedding(source_vocab, d)
        self.encoder = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.target_embedding = nn.Embedding(target_vocab, d)
        self.init = nn.Linear(d_h, d)
        self.cell = nn.GRUCell(d + d_h, d)
        self.readout = nn.Linear(d + d_h, target_vocab)
        if attention:  # d_a = d
            self.W1 = nn.Linear(d_h, d, bias=False)  # projects each h_i
            self.W2 = nn.Linear(d, d, bias=False)  # projects s_{t-1}
            self.v = nn.Linear(d, 1, bias=False)  # reads the score out

    def encode(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder states H (B, n, 2d) and the final states h_n = [→h_n ; ←h_1] (B, 2d)."""
        states, last = self.encoder(self.source_embedding(source))  # (B, n, 2d), (2, B, d)
        return states, torch.cat([last[0], last[1]], dim=-1)

    def weights(
        self, projected: torch.Tensor, query: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores e_t = vᵀ tanh(W1 h_i + W2 s_{t−1}) and α_t = softmax(e_t), each (B, n)."""
        summed = projected + self.W2(query).unsqueeze(1)  # (B, n, d_a)
        scores = self.v(torch.tanh(summed)).squeeze(-1)  # (B, n)
        return scores, torch.softmax(scores, dim=-1)

    def forward(
        self, source: torch.Tensor, previous: torch.Tensor, greedy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None, list[torch.Tensor]]:
        """Decode ``previous.shape[1]`` steps. ``previous`` (B, T) holds y_0 (the start token)
        then, with teacher forcing, the reference's words; ``greedy``: only its first column is
        read, each later y_{t−1} is the model's own best word. Returns the scores of every
        step's word (B, T, V), the attention weights (B, T, n; None without attention), and
        the decoder states s_0 .. s_{T−1} each step queried with."""
        states, final = self.encode(source)
        projected = self.W1(states) if self.attention else None  # (B, n, d_a)
        state = torch.tanh(self.init(final))  # s_0 (B, d)
        word = previous[:, 0]
        logits, alphas, queries = [], [], []
        for t in range(previous.shape[1]):
            queries.append(state)
            if projected is not None:
                _, alpha = self.weights(projected, state)
                context = torch.bmm(alpha.unsqueeze(1), states).squeeze(1)  # (B, 2d)
                alphas.append(alpha)
            else:
                context = final  # c = h_n at every step
            state = self.cell(torch.cat([self.target_embedding(word), context], dim=-1), state)
            scores = self.readout(torch.cat([state, context], dim=-1))  # (B, V)
            logits.append(scores)
            if t + 1 < previous.shape[1]:
                word = scores.argmax(dim=-1) if greedy else previous[:, t + 1]
        weights = torch.stack(alphas, dim=1) if alphas else None
        return torch.stack(logits, dim=1), weights, queries


def parameter_count(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())
