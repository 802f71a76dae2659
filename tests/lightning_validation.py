"""A Lightning validation loop logging gpukit's torchmetrics classes (run by tests/compat/test_torchmetrics.py).

``validate(devices)`` runs ``Trainer.validate`` in this process (devices=1)
or in forked workers ("ddp_fork": gloo on CPU; forking reuses the imports,
which keeps the test short) and returns rank 0's logged values. Every item is one query (all its candidates), so a batch never splits a
query; 16 queries shard evenly (no sampler padding repeats a query).
"""
from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from gpukit.compat.torchmetrics import RetrievalMAP, RetrievalNormalizedDCG, RetrievalRecall

QUERIES, CANDIDATES, FEATURES = 16, 12, 4


class Queries(Dataset):
    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.features = torch.randn(QUERIES, CANDIDATES, FEATURES, generator=g)
        self.grades = torch.randint(0, 3, (QUERIES, CANDIDATES), generator=g) * (torch.rand(QUERIES, CANDIDATES, generator=g) < 0.3)

    def __len__(self) -> int:
        return QUERIES

    def __getitem__(self, q: int):
        return self.features[q], self.grades[q], torch.full((CANDIDATES,), q, dtype=torch.long)


class Scorer(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.linear = torch.nn.Linear(FEATURES, 1)
        self.ndcg, self.ap, self.recall = RetrievalNormalizedDCG(top_k=5), RetrievalMAP(empty_target_action="skip"), RetrievalRecall(top_k=3)

    def validation_step(self, batch, batch_idx):
        features, grades, index = batch
        scores = self.linear(features).squeeze(-1)
        self.ndcg.update(scores, grades, index)
        self.ap(scores, grades > 0, index)  # forward, as metric(...) calls are usually written
        self.recall.update(scores, grades > 0, index)  # Recall takes binary targets, as torchmetrics
        self.log("ndcg@5", self.ndcg)
        self.log("map", self.ap)
        self.log("recall@3", self.recall)


def validate(devices: int) -> dict[str, float]:
    trainer = pl.Trainer(
        accelerator="cpu", devices=devices, strategy="ddp_fork" if devices > 1 else "auto",
        logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False,
    )
    return trainer.validate(Scorer(), DataLoader(Queries(), batch_size=3), verbose=False)[0]
