"""attn backward: how attention learns, the gradients of softmax(Q Kᵀ / √d_k) V step by step."""
