"""Training loops (LightningModule steps, optimisers, schedules) that several reproductions' systems share."""
