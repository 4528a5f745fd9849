"""Dagster definitions: jobs, sensors, resources and IO managers wired around the assets."""
