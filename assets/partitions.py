from dagster import DynamicPartitionsDefinition

# One partition per sub-folder of the corpus root; the corpus sensor adds and removes keys.
corpus_partitions = DynamicPartitionsDefinition(name="corpus")
