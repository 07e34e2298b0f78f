// Attribute.swift
// LiveActivity
//
// Created by Ali Can Batur on 28.07.2022.
// (The article imports SwiftUI, WidgetKit and ActivityKit here; IsletKit replaces the three.)
import IsletKit
struct StatusAttribute: ActivityAttributes {
public typealias ProcessStatus = ContentState
public struct ContentState: Codable, Hashable {
var status: Status
var estimatedCompletionTime: Date
}
var buildId: String
}
