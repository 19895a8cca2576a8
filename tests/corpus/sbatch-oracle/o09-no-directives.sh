#!/bin/bash
echo "all defaults"
